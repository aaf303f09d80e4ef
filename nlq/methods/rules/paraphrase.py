"""Paraphrases: general English rephrasings rewritten to the one phrasing the passes read.

    canonical("students who are 21 years old and above") -> "students who are age 21 or more"

A question can say one thing many ways ('18 years old' / 'aged 18' / 'age
18', 'exceeds 300' / 'more than 300', 'multiple captains' / 'more than one
captain', 'lack any' / 'do not have any', 'the most prevalent' / 'the most
common'). Rather than teach every pass every form, the question is first
rewritten, phrase by phrase, to the form the passes understand. Only general
English constructions are listed here — no database, field or benchmark
phrasing. Quoted text is never rewritten (it is a literal).
"""

from __future__ import annotations

import re

from nlq.text import STOPWORDS
from nlq.methods.rules.vocabulary import AGG_WORDS, WORD_NUMBERS

_FUNCTION_WORDS = STOPWORDS | {"total", "please", "descending", "ascending", "overall", "then"}
_N = r"(\d[\d,]*(?:\.\d+)?|" + "|".join(WORD_NUMBERS) + r")"
_YEARS_OLD = r"years?[ -](?:old|of age)"
_MORE = r"(?:above|over|older|more|higher|greater|up)"
_LESS = r"(?:below|under|younger|less|lower|fewer)"
_COMPARATOR = (r"more than|greater than|higher than|larger than|less than|fewer than|lower than|smaller than|"
               r"older than|younger than|at least|at most|over|above|under|below|exceeding|exceeds?|"
               r"surpass(?:es|ing)?")
_MAGNITUDES = {"hundred": 100, "thousand": 1000, "million": 1000000}


def _magnitude(m: re.Match) -> str:
    """'four thousand' -> '4000', '2.5 million' -> '2500000'."""
    head = m.group(1).lower()
    value = float(head) if head[0].isdigit() else WORD_NUMBERS[head]
    value *= _MAGNITUDES[m.group(2).lower()]
    return str(int(value)) if value == int(value) else str(value)


# superlatives that name their own measure (an age, a date, a length, a price)
_OWN_MEASURE = "oldest|youngest|newest|latest|earliest|longest|shortest|tallest|cheapest|priciest|heaviest|lightest"
# a bound another comparison follows ('before 2000 or later than 2010'): not 'N or later'
_ANOTHER_BOUND = r"(?!\s+(?:than\b|(?:the\s+)?(?:year\s+(?:of\s+)?)?\d))"

def _not_a_measure(word: str) -> bool:
    """A function word or a number ('more than one 3-star hotel'), not a measure's name."""
    word = word.lower()
    return word in _FUNCTION_WORDS or word in WORD_NUMBERS or word == "than"


# (pattern, replacement: a template or a function of the match), applied in order, case-insensitively, to unquoted text
REWRITES: tuple[tuple[re.Pattern, object], ...] = tuple((re.compile(p, re.IGNORECASE), r) for p, r in (
    # numbers in words: 'four thousand', '2.5 million'
    # (not part of a longer number: 'one hundred and twenty', 'four thousand two hundred')
    (r"\b(\d+(?:\.\d+)?|" + "|".join(WORD_NUMBERS) + r")[ -](hundred|thousand|million)\b"
     r"(?![ -](?:\d+|" + "|".join(WORD_NUMBERS) + r"|hundred|thousand)\b)"
     r"(?! and (?:\d+|" + "|".join(WORD_NUMBERS) + r")\b(?![ -](?:hundred|thousand|million)))", _magnitude),
    # contractions: "isn't" is 'is not', "won't" 'will not', "can't" 'can not'
    (r"\b(is|are|was|were|do|does|did|has|have|had|could|would|should|must|need)n['’]t\b", r"\1 not"),
    (r"\bwon['’]t\b", r"will not"),
    (r"\bcan['’]t\b", r"can not"),
    (r"\bcannot\b", r"can not"),
    # ages: '21 years old and above', 'over the age of 30', 'either 24 or 25 years old', 'aged 36'
    (rf"\b{_N}\s+{_YEARS_OLD}\s+(?:and|or)\s+{_MORE}\b", r"age \1 or more"),
    (rf"\b{_N}\s+{_YEARS_OLD}\s+(?:and|or)\s+{_LESS}\b", r"age \1 or less"),
    (rf"\b(?:over|above|older than|past) the age of\s+{_N}", r"older than \1"),
    (rf"\b(?:under|below|younger than) the age of\s+{_N}", r"younger than \1"),
    (rf"\b(?:either\s+)?{_N}\s+or\s+{_N}\s+{_YEARS_OLD}", r"age either \1 or \2"),
    (rf"\b({_COMPARATOR})\s+{_N}\s+{_YEARS_OLD}", r"\1 \2 age"),
    (rf"\b(older|younger) than\s+{_N}\s+years?\b(?!\s+(?:of|in|at|on|working|worked|served))", r"\1 than \2"),
    (rf"\b{_N}\s+{_YEARS_OLD}", r"age \1"),
    (rf"\baged\s+(?=either\b|{_N})", r"age "),
    # bounds: '100,000 and above', 'equal to or exceed 300', 'prior to 1850', 'exceed a height of 5000'
    # (not 'more than 5600 and lower than 5200', 'above 120 and below 200': a second bound, not 'or less')
    (rf"\b{_N}\s+and\s+(?:above|over|up|more|higher|greater|beyond)\b(?!\s+(?:than\b|the\b|\d))", r"\1 or more"),
    (rf"\b{_N}\s+and\s+(?:below|under|less|fewer|lower)\b(?!\s+(?:than\b|the\b|\d))", r"\1 or less"),
    (r"\b(?:equal to or (?:more|greater|higher|larger) than|equal to or (?:exceed(?:s|ing)?|above)|"
     r"greater than or equal to|no (?:less|fewer) than|not (?:less|fewer) than|a minimum of|minimum of)(?=\s)",
     r"at least"),
    (r"\b(?:equal to or (?:less|fewer|lower|smaller) than|less than or equal to|no more than|not more than|"
     r"a maximum of|maximum of|(?:does |do |did )?not (?:exceed(?:s|ing)?|go(?:ing)? (?:over|above)|over|above)|"
     r"up to|no greater than|no higher than|not greater than|not higher than)(?=\s+(?:the\s+)?(?:year\s+)?" + _N + ")",
     r"at most"),
    (r"\b(?:exceed(?:s|ed|ing)?|surpass(?:es|ed|ing)?|in excess of|rise above|rising above|rises above|"
     r"more than)(?=\s)", r"more than"),
    (rf"\bno (?:later|after) than(?=\s+(?:the\s+)?(?:year\s+(?:of\s+)?)?{_N})", r"at most"),
    (rf"\bno (?:earlier|sooner|before) than(?=\s+(?:the\s+)?(?:year\s+(?:of\s+)?)?{_N})", r"at least"),
    (r"\b(?:prior to|earlier than)(?=\s)", r"before"),
    (rf"\b(?:subsequent to|following|later than)(?=\s+(?:the\s+)?(?:years?\s+(?:of\s+)?)?{_N})", r"after"),
    # money: '$50', '€1,000' are the number
    (r"(?<![\w$€£])[$€£]\s?(?=\d)", r""),
    (rf"\b(more than|less than|at least|at most|over|above|under|below|before|after)\s+(?:an?|the)\s+(?!year\b)"
     rf"([a-z]+)\s+of\s+{_N}", r"\2 \1 \3"),
    # the measure said between the comparator and its number: 'visitors below age 30', 'a greater weight
    # than 10', 'between the ages of 20 and 25' (the measure first, as 'weight greater than 10')
    (rf"\b(more than|less than|at least|at most|over|above|under|below)\s+([a-z]+)\s+(?:of\s+)?{_N}\b",
     lambda m: m.group() if _not_a_measure(m.group(2)) else f"{m.group(2)} {m.group(1)} {m.group(3)}"),
    (rf"\b(?:an?\s+)?(greater|higher|larger|bigger|lower|smaller)\s+([a-z]+)\s+than\s+{_N}\b",
     lambda m: m.group() if _not_a_measure(m.group(2)) else f"{m.group(2)} {m.group(1)} than {m.group(3)}"),
    (rf"\bbetween\s+the\s+([a-z]+?)s\s+(?:of\s+)?{_N}\s+and\s+{_N}\b",
     lambda m: m.group() if _not_a_measure(m.group(1)) else f"{m.group(1)} between {m.group(2)} and {m.group(3)}"),
    # ranges: 'in the salary range of 100 to 200', 'within the 8000 to 12000 range'
    (rf"\b(?:fall(?:s|ing)? )?(?:with)?in (?:the|a) (?:([a-z]+) )?range (?:of|from) {_N} (?:and|to) {_N}",
     r"\1 between \2 and \3"),
    (rf"\b(?:fall(?:s|ing)? )?(?:with)?in (?:the|a) {_N} (?:and|to) {_N} range", r"between \1 and \2"),
    (rf"\b(?:ranging|ranges?|varying) (?:from|between) {_N} (?:to|and) {_N}", r"between \1 and \2"),
    (rf"\b(?:with)?in the range {_N} (?:to|and) {_N}", r"between \1 and \2"),
    (rf"\b(?:in|on) or (?:after|later than) {_N}", r"since \1"),
    (rf"\b(?:(?:in|of) )?(?:the )?(year )?{_N},? (?:and|or) (?:later|after|afterwards?|onwards?|beyond|since)\b"
     + _ANOTHER_BOUND, r"since the \1\2"),
    (rf"\bpost[- ]{_N}", r"after \1"),
    (rf"\bpre[- ]{_N}", r"before \1"),
    (rf"\b(?:from )?{_N} onwards?\b", r"since \1"),
    (rf"\b(?:in|on) or (?:before|earlier than) {_N}", r"at most \1"),
    # against the average: 'more distances than average', 'than the calculated average'
    (r"\bthan (?:the )?(?:calculated|overall|computed|mean) average\b", r"than the average"),
    (r"\b(more|greater|higher|larger|bigger|longer|less|fewer|lower|smaller|shorter) ([a-z]+) than (?:the )?average",
     r"\2 \1 than the average"),
    # text pieces: 'exclude the letter M', 'without the letter M', 'end in the letter m'
    (r"\b(?:excludes?|excluding|without|lacks?|lacking|do not have|does not have|don't have|doesn't have) "
     r"(?=(?:the|a|an) (?:letter|character|substring|word|string|text|phrase)s?\b)", r"not containing "),
    (r"\b(ends?|ending|starts?|starting|begins?|beginning) in (?=(?:the|a|an) (?:letter|character|word)s?\b)",
     r"\1 with "),
    # how many of an array: 'multiple captains', 'more than a single shop', 'two or more', 'a couple of'
    (r"\b(?:multiple|several|more than a single|more than just one)\s+(?=[a-z])", r"more than one "),
    (r"\b(?:a pair of|a couple of|a couple)\s+(?=[a-z])", r"two "),
    (r"\b(?:at least|a minimum of) a single\b", r"at least one"),
    (rf"\b{_N}\s+or\s+more\s+(?=[a-z])", r"at least \1 "),
    # setting a value aside: 'located elsewhere than the East', 'anywhere but Paris'
    (r"\b(?:elsewhere|anywhere other|somewhere other) than\b|\banywhere but\b", r"not in"),
    # absence: 'lack any entries', 'free from allergies', 'have yet to enroll'
    (r"\b(?:lacks?|lacking|lacked)\s+(?:any\s+|an?\s+)?", r"without any "),
    (r"\b(?:free (?:from|of)|unaffected by|devoid of|with zero)\s+(?:any\s+)?", r"without any "),
    (r"\b(?:has|have|had) yet to\b", r"did not"),
    # frequency: 'the most prevalent', 'appears most frequently', 'the highest occurrence'
    (r"\b(?:the )?(?:majority|bulk|greater part) of\b", r"most"),
    (r"\bmost (?:prevalent|frequent(?:ly)?(?: (?:occurring|used|appearing|seen))?|often occurring|widespread)\b",
     r"most common"),
    (r"\bleast (?:prevalent|frequent(?:ly)?(?: (?:occurring|used|appearing|seen))?)\b", r"least common"),
    # 'the most widely used flag', 'the most commonly reported allergy', 'the most represented nationality'
    (r"\b(most|least) (?:(?:widely|commonly) (?:used|reported|represented|found|seen|held|chosen|occurring|"
     r"performed|owned|spoken|adopted|selected)|represented)\b", r"\1 common"),
    (r"\b(?:highest|greatest|largest|biggest|maximum) (?:frequency|occurrence|number of occurrences)\b",
     r"most common"),
    (r"\b(?:lowest|smallest|minimum) (?:frequency|occurrence|number of occurrences)\b", r"least common"),
    # counted superlatives: 'the greatest number of peaks', 'the highest student count', 'least amount of'
    # ('the largest population of female students', 'the largest student headcount': a count of people)
    (r"\b(?:highest|greatest|largest|biggest|maximum|most) (?:number|count|amount|quantity|total number|"
     r"population|headcount) of\b", r"most number of"),
    (r"\b(?:lowest|smallest|fewest|minimum|least) (?:number|count|amount|quantity|total number|population|"
     r"headcount) of\b", r"least number of"),
    # 'the city that hosted the most events', 'the party with the most delegates': a plural noun right after
    # the superlative is counted, as 'the most number of events' ('the most popular', 'the most famous': an
    # adjective, not a plural; 'the most times' is a frequency, below; 'the most years of experience' a duration,
    # measured rather than counted; 'from the least to the most hits' an order)
    (r"(?<!to )(?<!to the )\b(most) (?!(?:times|has|was|does|years|months|weeks|days|hours|minutes|seconds)\b)"
     r"([a-z]+s\b(?<![sui]s)|people\b|men\b|women\b|children\b)",
     r"\1 number of \2"),
    # 'has been governor the most times', 'ordered the most number of times': how often, a frequency
    (r"\b(?:the )?most (?:number of )?times\b", r"most common"),
    (r"\b(?:the )?(?:least|fewest) (?:number of )?times\b", r"least common"),
    (r"\b(?:highest|greatest|largest|biggest|maximum) ([a-z]+) (?:counts?|population|headcount)\b",
     lambda m: m.group() if m.group(1).lower() in _FUNCTION_WORDS else "most number of " + m.group(1)),
    (r"\b(?:lowest|smallest|fewest|minimum) ([a-z]+) (?:counts?|population|headcount)\b",
     lambda m: m.group() if m.group(1).lower() in _FUNCTION_WORDS else "least number of " + m.group(1)),
    # a count compared: 'majors with a student count of less than three'
    (r"\b(?:an? |the )?([a-z]+) counts? (?:of |that is |which is |is |are )?(?=(?:less|more|fewer|greater|higher|"
     r"lower|at least|at most|over|under|above|below|exceed|no more|no less|no fewer)\b)",
     lambda m: m.group() if m.group(1).lower() in _FUNCTION_WORDS else f"the number of {m.group(1)} is "),
    # counts: 'the student counts', 'the quantity of buses', 'along with their frequency'
    (r"\b(?:respective|corresponding|associated|total)\s+(?=counts?\b)", r""),
    # 'the staff counts of shops', 'addresses and employee counts of shops' (a noun's count, of
    # each shop): the number of staff
    (r"\b(the|their|its|and) ([a-z]+) counts? of\b",
     lambda m: m.group() if m.group(2).lower() in _FUNCTION_WORDS | AGG_WORDS.keys()  # ('and lowest counts of')
     else f"{m.group(1)} number of {m.group(2)} of"),
    (r"\b(?:the )?(?:quantity|quantities|tally|tallies|counts?|headcount) of\b", r"the number of"),
    (r"\bthe total number of\b", r"the number of"),
    (r"\b(?:listed |sorted |ordered |arranged |ranked )?from (?:the )?most (?:frequent|common|often)? ?to (?:the )?"
     r"least (?:frequent|common|often)\b", r"in descending order of count"),
    (r"\b(?:listed |sorted |ordered |arranged |ranked )?from (?:the )?least (?:frequent|common|often)? ?to (?:the )?"
     r"most (?:frequent|common|often)\b", r"in ascending order of count"),
    (r"\b(?:by|of) (?:their |its |the )?(?:frequency|frequencies|number of occurrences|occurrences)\b", r"by count"),
    (r"\b(?:their|its|the) (?:frequency|frequencies|number of occurrences)\b", r"the count"),
    # fillers between a count and what it counts: 'the most corresponding counties', 'two different allergies',
    # 'three recorded events'
    (r"\b(most|fewest|least|more than one|at least one|\d+|" + "|".join(WORD_NUMBERS) + r") "
     r"(?:corresponding|associated|related|respective|linked|individual|separate|different|distinct|recorded|documented|"
     r"existing)\s+(?=[a-z])",
     r"\1 "),
    (r"\b(number of) (?:corresponding|associated|related|respective|linked)\s+(?=[a-z])", r"\1 "),
    (r"\b([a-z]+) counts?\b(?=\s*(?:$|[,.?;:)]|(?:for|per|in|and|along|with|associated|of each|by)\b))",
     lambda m: m.group() if m.group(1).lower() in _FUNCTION_WORDS else "number of " + m.group(1)),
    # ordering: 'from highest to lowest', 'from the fewest to the most', 'with the oldest listed first'
    (r"\b(?:going |listed |ranked |ordered )?from (?:the )?(?:highest|greatest|largest|biggest|most|maximum|top)"
     r"(?: \w+)? (?:to|down to) (?:the )?(?:lowest|least|smallest|fewest|minimum|bottom)\b", r"in descending order"),
    (r"\b(?:going |listed |ranked |ordered )?from (?:the )?(?:lowest|least|smallest|fewest|minimum|bottom)"
     r"(?: \w+)? (?:to|up to) (?:the )?(?:highest|greatest|largest|biggest|most|maximum|top)\b", r"in ascending order"),
    # a superlative naming its own measure: 'sorted from oldest to youngest' is the oldest first
    (r"\b(?:(?:going|listed|ranked|ordered|sorted|arranged|organi[sz]ed|shown|displayed) )?(?:in order )?"
     rf"from (?:the )?({_OWN_MEASURE})(?: ones?)? (?:to|down to|up to|through) "
     rf"(?:the )?(?:{_OWN_MEASURE})(?: ones?)?\b",
     r"\1 first"),
    (r"\b(?:with )?the (oldest|youngest|newest|latest|earliest|highest|lowest|largest|smallest) "
     r"(?:listed|shown|displayed|appearing|coming) first\b", r"\1 first"),
    # 'in a descending manner', 'in an ascending sequence': the order's direction
    (r"\bin (?:an? )?(ascending|descending|increasing|decreasing) (?:manner|sequence|fashion|way)\b", r"in \1 order"),
    (r"\b(ordered|sorted|arranged|ranked|listed|organi[sz]ed) (?:in )?(?:terms of|according to|based on)\b", r"\1 by"),
    # 'sorted by the year they were opened': the opening year
    (r"\b(?:the )?(year|date|day|time) (?:that |when |in which )?(?:they|it) "
     r"(?:were |was |are |is |had been |have been )?([a-z]+ed)\b", r"\2 \1"),
    # grouping: 'the average price according to their category' (an order phrase was rewritten above)
    (r"\b(?:according to|based on) (?:their |its |the )?(?=[a-z])", r"by "),
    # ordering: 'starting with the eldest', 'from most to least'
    # ('starting with the oldest' keeps its own measure: the oldest date is the earliest, the oldest age the greatest)
    (r"\bstarting (?:with|from) the (?:eldest|oldest)\b", r"oldest first"),
    (r"\bstarting (?:with|from) the (youngest|latest|newest|earliest)\b", r"\1 first"),
    (r"\bstarting (?:with|from) the (?:highest|largest|biggest|most|greatest)\b", r"in descending order"),
    (r"\bstarting (?:with|from) the (?:lowest|smallest|least|fewest)\b", r"in ascending order"),
    # letters as an order: 'sorted from Z to A', 'listed in order from A to Z'
    (r"\b(?:in (?:alphabetical |alphabetic )?order |alphabetically )?from a (?:to|through) z\b", r"in alphabetical order"),
    (r"\b(?:in (?:alphabetical |alphabetic )?order |alphabetically )?from z (?:to|through) a\b",
     r"in reverse alphabetical order"),
    (r"\bmost recent(?:ly)?\b", r"latest"),
    (r"\bleast recent(?:ly)?\b", r"earliest"),
    # the extremes of one measure: 'the ages of the youngest and oldest', 'the oldest and youngest ages'
    (r"\b(?:the )?ages? of (?:the )?(?:youngest|oldest),? (?:and|or) (?:the )?(?:youngest|oldest)\b",
     r"the minimum and maximum age of the"),
    (r"\b(?:the )?(?:youngest|oldest),? (?:and|or) (?:the )?(?:youngest|oldest) ages?\b", r"the minimum and maximum age"),
    # 'the youngest, average, and oldest ages', 'the oldest age among': statistics of the age
    (r"\b(?:(?:youngest|oldest|average|mean|minimum|maximum|lowest|highest|total)(?:,? and |, ?| or ))+"
     r"(?:youngest|oldest|average|mean|minimum|maximum|lowest|highest|total) ages?\b",
     lambda m: re.sub(r"\byoungest\b", "minimum", re.sub(r"\boldest\b", "maximum", m.group()))),
    (r"\b(youngest|oldest) ages?\b", lambda m: ("minimum" if m.group(1).lower() == "youngest" else "maximum") + " age"),
    # everything: 'the complete information about', 'everything about'
    (r"\b(?:the )?(?:complete|full|entire|whole|comprehensive) (information|info|details|data|records?)\b",
     r"all the \1"),
    (r"\ball (?:the )?(?:relevant|available|recorded|stored) (information|info|details|data|records)\b", r"all the \1"),
    (r"\bevery detail\b", r"all the details"),
    (r"\beverything (?=about|on|regarding|concerning|for)\b", r"all the information "),
    (r"(?<!all )\b(?:the )?(information|info) (?=about|on|regarding|concerning|of)\b", r"all the \1 "),
    # name parts sharing one head: 'first and last names', 'names (both first and last)'
    (r"\b(first|last|middle|given|family), (first|last|middle|given|family),? (?:and|&) (first|last|middle|given|family) "
     r"(names?)\b", r"\1 \4, \2 \4 and \3 \4"),
    (r"\b(first|last|middle|given|family) (?:and|&) (first|last|middle|given|family) names\b",
     r"\1 names and \2 names"),
    (r"\b(first|last|middle|given|family) (?:and|&) (first|last|middle|given|family) name\b", r"\1 name and \2 name"),
    (r"\bnames \((?:both )?(first|last) and (first|last)\)", r"\1 names and \2 names"),
    # words: 'eldest' is 'oldest', a 'surname' a 'last name', an 'identifier' an 'id'
    (r"\beldest\b", r"oldest"),
    (r"\bsurnames\b", r"last names"),
    (r"\bsurname\b", r"last name"),
    (r"\bidentifiers\b", r"ids"),
    (r"\bidentifier\b", r"id"),
))


QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”|‘[^’]*’|(?<!\w)'[^']*'(?!\w)")


def canonical(text: str) -> str:
    """The question with its general rephrasings rewritten (quoted literals untouched)."""
    pieces, last = [], 0
    for quoted in QUOTED.finditer(text):
        pieces += [_rewrite(text[last:quoted.start()]), quoted.group()]
        last = quoted.end()
    pieces.append(_rewrite(text[last:]))
    return "".join(pieces)


def _rewrite(text: str) -> str:
    for pattern, replacement in REWRITES:
        text = pattern.sub(replacement, text)
    return text
