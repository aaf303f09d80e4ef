"""General English vocabulary of `rules`: count, aggregate, ordering and comparison words.

No benchmark phrasings, databases or questions: only words and patterns any
English question may use.
"""

from __future__ import annotations

import re

from nlq.text import STOPWORDS as TEXT_STOPWORDS


COUNT_PATTERNS = re.compile(r"\b(how many|numbers? of|count of|count the|count|total number)\b")


AGG_WORDS = {
    "average": "$avg", "avg": "$avg", "mean": "$avg",
    "total": "$sum", "sum": "$sum", "combined": "$sum",
    "maximum": "$max", "max": "$max", "highest": "$max", "largest": "$max", "biggest": "$max",
    "greatest": "$max", "most": "$max", "top": "$max",
    "minimum": "$min", "min": "$min", "lowest": "$min", "smallest": "$min", "least": "$min",
    "fewest": "$min",
}


DISTINCT_WORDS = {"distinct", "different", "unique", "various", "individual"}


# 'without duplicates', 'with no repeats', 'each listed once': a set of values
DISTINCT_PHRASES = re.compile(r"\b(?:without|with no|no|removing|excluding|eliminating) (?:any )?"
                              r"(?:duplicates?|duplicated (?:values|entries|rows)|repeats?|repetitions?)\b"
                              r"|\b(?:de-?duplicated|listed only once|each listed once|only once each)\b"
                              # 'the number of card types', 'how many types of jobs': the kinds there are
                              r"|\b(?:how many|number of|count of)\s+(?:\w+\s+)?(?:types?|kinds?|sorts?|varieties)\b")


GROUP_PATTERNS = re.compile(r"\b(?:(?:for|in|of|by|on|at|to|with|from|under|within|among|across|does|do|did|"
                            r"has|have|had) (?:each|every)|per|grouped by|group by|"
                            r"broken down by|count by|counts by|"
                            r"(?:for|across|from|among|under|in|at|during|with|(?<!number )(?<!numbers )(?<!count )of) "
                            r"(?:the )?(?:different|various)|"
                            r"(?:classified|categori[sz]ed|separated|split|grouped|broken down|sorted into) "
                            r"(?:by|according to|into|under)(?: (?:their|its|the))?)\s+")


DESC_WORDS = {"descending", "decreasing", "highest", "largest", "most", "biggest", "greatest",
              "oldest", "latest", "newest", "longest", "top", "maximum"}


ASC_WORDS = {"ascending", "increasing", "lowest", "smallest", "least", "fewest", "youngest",
             "earliest", "shortest", "alphabetical", "alphabetically", "minimum", "cheapest", "lightest",
             "narrowest", "nearest", "slowest", "poorest", "worst"}


# Superlatives that name their own measure (an age, a date, a length).
MEASURE_SUPERLATIVES = {
    "oldest": ("age", -1), "youngest": ("age", 1),
    "newest": ("year", -1), "latest": ("date", -1), "earliest": ("date", 1),
    "longest": ("length", -1), "shortest": ("length", 1),
    "highest": ("height", -1), "tallest": ("height", -1), "lowest": ("height", 1),  # when no measure is named
    "cheapest": ("price", 1), "priciest": ("price", -1),
}


# 'the most expensive', 'the least expensive': a price, ranked
PRICE_PHRASE = re.compile(r"\b(most|least) (?:expensive|costly)\b")


COMPARATORS = [
    # (pattern, operator); N is a number captured as group "n"
    (r"(?:more|greater|higher|larger|bigger|older|longer|taller|heavier|later) than", "$gt"),
    (r"(?:less|fewer|lower|smaller|younger|shorter|lighter|earlier|cheaper) than", "$lt"),
    (r"at least|no less than|not less than|minimum of|(?:greater|more|higher) than or equal to", "$gte"),
    (r"at most|no more than|not more than|maximum of|(?:less|fewer|lower) than or equal to|"
     r"up to(?: and including)?", "$lte"),
    (r"exactly|precisely", "$eq"),  # 'exactly two guides'
    (r"since|from", "$gte"),  # 'since 1990' includes 1990
    (r"over|above|exceeding|exceeds|after", "$gt"),
    (r"under|below|before", "$lt"),
]


WORD_NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14,
                "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20,
                "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
                "hundred": 100}


# a number as written: thousands separators allowed ('more than 1,000')
NUMERAL = r"-?(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?"
NUMBER = r"(?P<n>" + NUMERAL + "|" + "|".join(WORD_NUMBERS) + ")"


# 'between 2 and 5', 'from 2002 to 2004', and a span of years said bare ('during the years 1998 to 2002',
# '2002 through 2004'): both bounds included
_YEAR = r"(?:1[89]|20)\d\d"
BETWEEN = re.compile(r"\b(?:between|from|(?:with)?in the range (?:of|from|between))\s+" + NUMBER
                     + r"\s+(?:and|to|through|until|till)\s+(?P<m>" + NUMERAL + "|" + "|".join(WORD_NUMBERS) + r")\b"
                     + r"|\b(?P<y>" + _YEAR + r")\s*(?:to|through|until|till|-|–)\s*(?P<z>" + _YEAR + r")\b")


# 'N or more', '2011 or later': the bound is included (not in 'before 1900 or after 2000')
OR_MORE = frozenset({"more", "greater", "higher", "above", "later", "after", "over"})


# Comparatives that may compare two stored quantities of one document ('a checking balance higher than
# the savings balance'), and the operator they compare with.
FIELD_COMPARATIVES = {
    **dict.fromkeys("more greater higher larger bigger longer older taller heavier later warmer hotter "
                    "above exceeding".split(), "$gt"),
    **dict.fromkeys("less fewer lower smaller shorter younger lighter earlier cheaper cooler colder "
                    "below beneath".split(), "$lt")}


OR_LESS = frozenset({"less", "fewer", "lower", "below", "earlier", "before", "under"})


# ... unless another number follows ('before 1900 or after the year of 2000' is two bounds)
OR_BOUND = re.compile(NUMBER + r"\s+or\s+(" + "|".join(sorted(OR_MORE | OR_LESS)) + r")\b"
                      r"(?!\s+(?:than\b|(?:the\s+)?(?:year\s+(?:of\s+)?)?\d))")


NEGATIONS = {"not", "no", "except", "excluding", "exclude", "excludes", "outside", "other", "without", "never",
             "don't", "doesn't", "didn't", "haven't", "hasn't", "none", "nobody", "non"}


# Negations that set values aside rather than deny that something exists ('except X', 'outside Y').
SETTING_ASIDE = frozenset({"except", "excluding", "exclude", "excludes", "outside", "other"})


# Superlatives that rank ('the 3 tallest', 'the five most expensive'): the ranking words,
# those naming their own measure, and other common '-est' adjectives of size, age, cost and weight.
SUPERLATIVES = frozenset(DESC_WORDS | ASC_WORDS | set(MEASURE_SUPERLATIVES) | {
    "best", "worst", "heaviest", "lightest", "richest", "poorest", "busiest", "fastest", "slowest",
    "widest", "narrowest", "deepest", "nearest", "farthest", "furthest", "fewest", "greatest", "tallest",
    "highest", "lowest", "biggest", "smallest"}) - {"descending", "decreasing", "ascending", "increasing",
                                                    "alphabetical", "alphabetically", "maximum", "minimum", "top"}


LIMIT_PATTERNS = re.compile(r"\b(?:top|first|last|highest|lowest|largest|smallest|best|worst)\s+(?P<n>\d+)\b"
                            r"|\b(?:top\s+)?(?P<m>\d+|" + "|".join(WORD_NUMBERS) + r")\s+"
                            r"(?:(?:" + "|".join(sorted(SUPERLATIVES)) + r")|top)\b")


ALL_FIELDS_PATTERNS = re.compile(r"\ball (?:the )?(?:(?P<of>\w+) )?"
                                 r"(?:information|info|details|data|records|entries|attributes|fields|columns)\b")
# 'find the details for all chip models', 'retrieve information for every X': every field, unless a field is named
# by the details asked (the noun said right after the request, no modifier: 'venue details for each' is a field)
DETAILS_PATTERNS = re.compile(r"(?:^|\b(?:provide|retrieve|show|get|find|give|display|list|fetch|present|are|me)\s+)"
                              r"(?:the\s+)?(?P<noun>details|specifications|information|info)\s+"
                              r"(?:of|for|about|on|regarding|concerning)\b")


# Words that carry no schema meaning: general stopwords plus request verbs.
STOPWORDS = TEXT_STOPWORDS | frozenset(
    "show list give find return display tell please provide retrieve get identify name names "
    "value values record records entry entries".split())


# Light synonyms: question word -> field words it may stand for.
SYNONYMS = {
    "age": ("age",), "old": ("age",), "year": ("year",), "when": ("date", "year"),
    "called": ("name",), "named": ("name",), "title": ("name", "title"),
    "cost": ("price", "cost"), "price": ("price", "cost"), "salary": ("salary", "pay", "wage"),
    "city": ("city", "town"), "town": ("city", "town"),
    "number": ("id", "no", "num"),  # 'employee number' is its identifier
    "earning": ("salary", "pay", "wage", "income"), "earn": ("salary", "pay", "wage", "income"),
    "paid": ("salary", "pay", "wage"), "pay": ("salary", "pay", "wage"), "wage": ("salary", "wage"),
    "compensation": ("salary", "pay", "wage"), "income": ("salary", "income"),
    "fare": ("price", "fare", "cost"), "costing": ("price", "cost"), "priced": ("price",), "pricing": ("price",),
    "eldest": ("age",), "aged": ("age",),
    "gender": ("sex", "gender"), "sex": ("sex", "gender"),
    "store": ("shop", "store"), "shop": ("shop", "store"), "role": ("position", "role"),
    "position": ("position", "role"), "rating": ("score", "rating"), "rated": ("score", "rating"),
    "score": ("score", "point"), "point": ("point", "score"),
    "telephone": ("phone",), "identifier": ("id",), "day": ("day", "date"), "length": ("length", "duration"),
    "duration": ("duration", "length"), "departure": ("origin", "departure"), "arrival": ("destination", "arrival"),
    "category": ("type", "category"), "classification": ("type", "class", "category"), "kind": ("type",),
    "information": ("detail", "info", "information"), "info": ("detail", "info", "information"),
    "movie": ("film", "movie"), "film": ("film", "movie"), "vessel": ("ship", "vessel"),
    "university": ("university", "school", "college"),
    "speed": ("speed", "velocity"), "velocity": ("velocity", "speed"),
    "location": ("location", "place", "site"), "site": ("site", "location"),
    "occupation": ("occupation", "job", "profession"), "job": ("job", "occupation", "profession"),
    "profession": ("profession", "occupation", "job"), "outcome": ("outcome", "result"),
    "result": ("result", "outcome"),
}


# One word for a two-word name ('forename' is a first name); closed compounds of
# the name's own words ('hometown' of home_town) need no entry.
COMPOUND_WORDS = {"forename": ("first", "name"), "username": ("login", "name")}


# Roots of words that name the same event ('established' a school is when it was 'founded' or 'opened').
RELATED_ROOTS = {
    "establish": ("found", "open", "start", "creat", "launch"), "launch": ("found", "open", "start", "establish"),
    "found": ("establish", "open", "start", "creat"), "start": ("begin", "open", "found", "establish"),
    "creat": ("found", "establish", "made"), "begin": ("start",),
}


MONTHS = {m: i for i, m in enumerate(
    "january february march april may june july august september october november december".split(), 1)}
MONTHS.update({m[:3]: i for m, i in list(MONTHS.items())})
MONTHS["sept"] = 9


# Words before a date that place what it dates before or after it (else it is the day, or the month, itself).
DATE_COMPARISONS = (("on or after", "$gte"), ("on or before", "$lte"), ("no later than", "$lte"),
                    ("no earlier than", "$gte"), ("later than", "$gt"), ("earlier than", "$lt"),
                    ("subsequent to", "$gt"), ("prior to", "$lt"), ("after", "$gt"), ("before", "$lt"),
                    ("since", "$gte"), ("until", "$lte"), ("till", "$lte"), ("post", "$gt"), ("pre", "$lt"))


DATE_PARTS = {"year": "year", "month": "month", "day": "dayOfMonth", "weekday": "dayOfWeek"}


# Aggregate words that name a statistic (not a ranking such as 'most' or 'top').
STATISTICS = frozenset(w for w, op in AGG_WORDS.items() if w not in ("most", "least", "fewest", "top"))


# Irregular past participles and the roots of the words a field may name their act by
# ('sold' tickets_sold / Sales, 'paid' amount_paid / Payment); regular ones end in '-ed'.
IRREGULAR_PARTICIPLES = {
    "sold": ("sold", "sell", "sale"), "paid": ("paid", "pay"), "bought": ("bought", "buy"),
    "spent": ("spent", "spend"), "won": ("won", "win"), "held": ("held", "hold"), "made": ("made", "make"),
    "built": ("built", "build"), "given": ("given", "give"), "taken": ("taken", "take"), "sent": ("sent", "send"),
    "taught": ("taught", "teach"), "brought": ("brought", "bring"), "lost": ("lost", "lose", "loss"),
    "kept": ("kept", "keep"), "flown": ("flown", "fly", "flight"), "written": ("written", "write"),
    "drawn": ("drawn", "draw"), "grown": ("grown", "grow"), "shown": ("shown", "show"), "seen": ("seen", "see"),
    "done": ("done", "do"), "driven": ("driven", "drive"), "ridden": ("ridden", "ride"), "run": ("run",),
}


# Endings of adjectives ('the corresponding number of', 'the respective number of', 'a sizeable number of').
ADJECTIVE_ENDINGS = ("ly", "ing", "ive", "ed", "al", "ous", "ful", "ic", "ent", "ant", "ary", "ble", "est", "er")
