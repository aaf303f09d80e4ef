"""Array expression operators.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/#array-expression-operators
Most operators return null for a null or missing array and raise MongoDB's
error for any other non-array; `$size` and `$in` raise even for null.
"""

from __future__ import annotations

from operator import is_

from nlq.errors import ExecutionError, MemoryLimit
from nlq.mql.expressions import (CHECK_EVERY, CHECK_EVERY_EVAL, check_deadline, check_deadline_for,
                                  check_variable_name, compile_args, compile_expression, compile_named, paced,
                                  sorted_paced, unary_operator)
from nlq.mql.limits import MAX_VALUE_BYTES, too_large, value_size
from nlq.mql.numeric import int_value, positive_n
from nlq.mql.registry import EXPRESSION, implements
from nlq.mql.stages.ordering import parse_sort_spec, sort_documents
from nlq.mql.values import MISSING, bson_type, expression_equal, is_nullish, is_number, is_truthy, sort_key

# $range refuses to build more than MongoDB's 64 MiB of values (16 bytes each).
RANGE_MAX_ELEMENTS = (64 << 20) // 16


# --- element access -----------------------------------------------------------------

@implements(EXPRESSION, "$arrayElemAt")
def _array_elem_at(args):
    array_fn, index_fn = compile_args(args, name="$arrayElemAt", min_args=2, max_args=2)

    def evaluate(vars):
        array, index = array_fn(vars), index_fn(vars)
        if is_nullish(array) or is_nullish(index):
            return None
        if type(array) is not list:
            raise ExecutionError(f"$arrayElemAt's first argument must be an array, but is {bson_type(array)}",
                                 code=28689)
        i = int_value("$arrayElemAt", "second argument", index)
        if -len(array) <= i < len(array):
            return array[i]
        return MISSING
    return evaluate


def _first_last(op: str, position: int):
    def element(array):
        if type(array) is not list:
            raise ExecutionError(f"{op}'s argument must be an array, but is {bson_type(array)}")
        return array[position] if array else MISSING
    return unary_operator(op, element)


implements(EXPRESSION, "$first")(_first_last("$first", 0))
implements(EXPRESSION, "$last")(_first_last("$last", -1))


@implements(EXPRESSION, "$size")
def _size(args):
    (fn,) = compile_args(args, name="$size", min_args=1, max_args=1)

    def evaluate(vars):
        array = fn(vars)
        if type(array) is not list:
            raise ExecutionError(f"The argument to $size must be an array. Type of the argument: {bson_type(array)}",
                                 code=17124)
        return len(array)
    return evaluate


@implements(EXPRESSION, "$isArray")
def _is_array(args):
    (fn,) = compile_args(args, name="$isArray", min_args=1, max_args=1)
    return lambda vars: type(fn(vars)) is list


@implements(EXPRESSION, "$in")
def _in(args):
    item_fn, array_fn = compile_args(args, name="$in", min_args=2, max_args=2)

    def evaluate(vars):
        item, array = item_fn(vars), array_fn(vars)
        if type(array) is not list:
            raise ExecutionError(f"$in requires an array as a second argument, found: {bson_type(array)}", code=40081)
        check_deadline_for(array)
        for v in array:
            if expression_equal(item, v):  # a missing item equals nothing, not even null
                return True
        return False
    return evaluate


@implements(EXPRESSION, "$indexOfArray")
def _index_of_array(args):
    fns = compile_args(args, name="$indexOfArray", min_args=2, max_args=4)

    def evaluate(vars):
        array = fns[0](vars)
        if is_nullish(array):
            return None
        if type(array) is not list:
            raise ExecutionError(f"$indexOfArray requires an array as a first argument, found: {bson_type(array)}")
        search = fns[1](vars)
        start, end = 0, len(array)
        if len(fns) > 2:
            start = _index_bound(fns[2](vars), "starting")
        if len(fns) > 3:
            end = min(end, _index_bound(fns[3](vars), "ending"))
        check_deadline_for(array)
        for i in range(start, end):
            if expression_equal(search, array[i]):
                return i
        return -1
    return evaluate


def _index_bound(value, which: str) -> int:
    if not is_number(value):
        raise ExecutionError(f"$indexOfArray requires an integral {which} index, found a value of type: "
                             f"{bson_type(value)}, with value: {value!r}")
    i = int_value("$indexOfArray", f"{which} index", value)
    if i < 0:
        raise ExecutionError(f"$indexOfArray requires a nonnegative {which} index, found: {i}")
    return i


@implements(EXPRESSION, "$slice")
def _slice(args):
    fns = compile_args(args, name="$slice", min_args=2, max_args=3)

    def evaluate(vars):
        values = [fn(vars) for fn in fns]
        if any(is_nullish(v) for v in values):
            return None
        array = values[0]
        if type(array) is not list:
            raise ExecutionError(f"First argument to $slice must be an array, but is of type: {bson_type(array)}")
        if len(values) == 2:
            n = int_value("$slice", "second argument", values[1])
            return array[:n] if n >= 0 else array[max(len(array) + n, 0):]
        position = int_value("$slice", "second argument", values[1])
        n = int_value("$slice", "third argument", values[2])
        if n <= 0:
            raise ExecutionError(f"Third argument to $slice must be positive: {n}")
        if position < 0:
            position = max(len(array) + position, 0)
        return array[position:position + n]
    return evaluate


# --- building arrays ------------------------------------------------------------------

@implements(EXPRESSION, "$concatArrays")
def _concat_arrays(args):
    fns = compile_args(args, name="$concatArrays")

    def evaluate(vars):
        out = []
        for fn in fns:
            v = fn(vars)
            if is_nullish(v):
                return None
            if type(v) is not list:
                raise ExecutionError(f"$concatArrays only supports arrays, not {bson_type(v)}", code=28664)
            out.extend(v)
            if len(out) > RANGE_MAX_ELEMENTS:
                raise MemoryLimit(f"$concatArrays would build an array of more than {RANGE_MAX_ELEMENTS} "
                                  f"elements: it would use too much memory")
        check_deadline_for(out)
        return out
    return evaluate


@implements(EXPRESSION, "$range")
def _range(args):
    fns = compile_args(args, name="$range", min_args=2, max_args=3)

    def evaluate(vars):
        values = [fn(vars) for fn in fns]
        names = ("starting value", "ending value", "step value")
        ints = []
        for value, what in zip(values, names):
            if not is_number(value):
                raise ExecutionError(f"$range requires a numeric {what}, found value of type: {bson_type(value)}")
            ints.append(int_value("$range", what, value))
        start, end = ints[0], ints[1]
        step = ints[2] if len(ints) == 3 else 1
        if step == 0:
            raise ExecutionError("$range requires a non-zero step value")
        count = max(0, (end - start + step - (1 if step > 0 else -1)) // step)
        if count > RANGE_MAX_ELEMENTS:
            raise MemoryLimit(f"$range would use too much memory ({count * 16} bytes) and cannot spill to disk. "
                                 f"Memory limit: {64 << 20} bytes")
        if count >= CHECK_EVERY:
            check_deadline()
        return list(range(start, end, step))
    return evaluate


def _reverse_array(array):
    if type(array) is not list:
        raise ExecutionError(f"The argument to $reverseArray must be an array, but was of type: {bson_type(array)}")
    return array[::-1]


implements(EXPRESSION, "$reverseArray")(unary_operator("$reverseArray", _reverse_array))


@implements(EXPRESSION, "$zip")
def _zip(args):
    named = compile_named(args, name="$zip", required=("inputs",), optional=("useLongestLength", "defaults"))
    if type(args["inputs"]) is not list:
        raise ExecutionError("inputs must be an array of expressions, found " + bson_type(args["inputs"]))
    inputs = [compile_expression(a) for a in args["inputs"]]
    longest = args.get("useLongestLength", False)
    if type(longest) is not bool:
        raise ExecutionError(f"useLongestLength must be a bool, found {bson_type(longest)}")
    defaults_fn = named.get("defaults")
    if defaults_fn is not None and not longest:
        raise ExecutionError("cannot specify defaults unless useLongestLength is true")

    def evaluate(vars):
        arrays = []
        for fn in inputs:
            v = fn(vars)
            if is_nullish(v):
                return None
            if type(v) is not list:
                raise ExecutionError(f"$zip found a non-array expression in input: {v!r}")
            arrays.append(v)
        defaults = [None] * len(arrays)
        if defaults_fn is not None:
            d = defaults_fn(vars)
            if type(d) is not list:
                raise ExecutionError(f"defaults must be an array, found {bson_type(d)}")
            if len(d) != len(arrays):
                raise ExecutionError("defaults and inputs must have the same length")
            defaults = d
        if not arrays:
            return []
        length = max(map(len, arrays)) if longest else min(map(len, arrays))
        size = length * (9 + 12 * len(arrays))  # at least: one array of len(arrays) elements per row
        if size > MAX_VALUE_BYTES:
            raise too_large("$zip", size)
        out = []
        for start in range(0, length, CHECK_EVERY):
            check_deadline()
            out.extend([a[i] if i < len(a) else defaults[j] for j, a in enumerate(arrays)]
                       for i in range(start, min(length, start + CHECK_EVERY)))
        return out
    return evaluate


# --- objects <-> arrays ------------------------------------------------------------------

def _object_to_array(obj):
    if type(obj) is not dict:
        raise ExecutionError(f"$objectToArray requires a document input, found: {bson_type(obj)}", code=40390)
    if len(obj) < CHECK_EVERY:
        return [{"k": k, "v": v} for k, v in obj.items()]
    return [{"k": k, "v": v} for k, v in paced(list(obj.items()))]


def _array_to_object(array):
    if type(array) is not list:
        raise ExecutionError(f"$arrayToObject requires an array input, found: {bson_type(array)}")
    out = {}
    shape = None
    for item in paced(array):
        if type(item) is list:
            if shape == "doc":
                raise ExecutionError("$arrayToObject requires a consistent input format. Elements must all be "
                                     "arrays or all be objects")
            shape = "pair"
            if len(item) != 2:
                raise ExecutionError(f"$arrayToObject requires an array of size 2 arrays,found array of size: "
                                     f"{len(item)}")
            key, value = item
        elif type(item) is dict:
            if shape == "pair":
                raise ExecutionError("$arrayToObject requires a consistent input format. Elements must all be "
                                     "arrays or all be objects")
            shape = "doc"
            if len(item) != 2 or "k" not in item or "v" not in item:
                raise ExecutionError("$arrayToObject requires an object with keys 'k' and 'v'. Missing either or "
                                     "both keys from: " + repr(item))
            key, value = item["k"], item["v"]
        else:
            raise ExecutionError(f"Unrecognised input type format for $arrayToObject: {bson_type(item)}")
        if type(key) is not str:
            raise ExecutionError(f"$arrayToObject requires the key to be a string, found: {bson_type(key)}")
        if "\x00" in key:
            raise ExecutionError("Key field cannot contain an embedded null byte")
        out[key] = value
    return out


implements(EXPRESSION, "$objectToArray")(unary_operator("$objectToArray", _object_to_array))
implements(EXPRESSION, "$arrayToObject")(unary_operator("$arrayToObject", _array_to_object))


# --- higher-order: $filter $map $reduce ---------------------------------------------------

@implements(EXPRESSION, "$filter")
def _filter(args):
    named = compile_named(args, name="$filter", required=("input", "cond"), optional=("as", "limit"))
    name = check_variable_name("$filter", args.get("as", "this"))
    input_fn, cond_fn, limit_fn = named["input"], named["cond"], named.get("limit")

    def evaluate(vars):
        array = input_fn(vars)
        if is_nullish(array):
            return None
        if type(array) is not list:
            raise ExecutionError(f"input to $filter must be an array not {bson_type(array)}", code=28651)
        limit = None
        if limit_fn is not None:
            lv = limit_fn(vars)
            if not is_nullish(lv):
                if not is_number(lv):
                    raise ExecutionError(f"$filter: limit must be represented as a 32-bit integral value: {lv!r}")
                limit = int_value("$filter", "limit", lv)
                if limit < 1:
                    raise ExecutionError(f"$filter: limit must be greater than 0: {limit}")
        scope = dict(vars)
        out = []
        for i, item in enumerate(array):
            if i % CHECK_EVERY_EVAL == CHECK_EVERY_EVAL - 1:
                check_deadline()
            scope[name] = item
            if is_truthy(cond_fn(scope)):
                out.append(item)
                if limit is not None and len(out) >= limit:
                    break
        return out
    return evaluate


@implements(EXPRESSION, "$map")
def _map(args):
    named = compile_named(args, name="$map", required=("input", "in"), optional=("as",))
    name = check_variable_name("$map", args.get("as", "this"))
    input_fn, in_fn = named["input"], named["in"]

    def evaluate(vars):
        array = input_fn(vars)
        if is_nullish(array):
            return None
        if type(array) is not list:
            raise ExecutionError(f"input to $map must be an array not {bson_type(array)}", code=16883)
        scope = dict(vars)
        out = []
        size = 0  # bytes of the elements measured so far (each measured once, CHECK_EVERY at a time)
        for i, item in enumerate(array):
            if i % CHECK_EVERY_EVAL == CHECK_EVERY_EVAL - 1:
                check_deadline()
            scope[name] = item
            v = in_fn(scope)
            out.append(None if v is MISSING else v)
            if len(out) % CHECK_EVERY == 0:
                size += value_size(out[-CHECK_EVERY:], MAX_VALUE_BYTES, {})
                if size > MAX_VALUE_BYTES:
                    raise too_large("$map", size)
        rest = len(out) % CHECK_EVERY
        if size and rest and size + value_size(out[-rest:], MAX_VALUE_BYTES, {}) > MAX_VALUE_BYTES:
            raise too_large("$map", size)
        return out
    return evaluate


@implements(EXPRESSION, "$reduce")
def _reduce(args):
    named = compile_named(args, name="$reduce", required=("input", "initialValue", "in"))
    input_fn, initial_fn, in_fn = named["input"], named["initialValue"], named["in"]

    def evaluate(vars):
        array = input_fn(vars)
        if is_nullish(array):
            return None
        if type(array) is not list:
            raise ExecutionError(f"$reduce requires that 'input' be an array, found: {bson_type(array)}", code=40080)
        value = initial_fn(vars)
        scope = dict(vars)
        memo: dict = {}  # the parts of earlier values, measured once (see limits.value_size)
        prev, prev_size = (), 0  # the last container value and its size
        for i, item in enumerate(array):
            if i % CHECK_EVERY_EVAL == CHECK_EVERY_EVAL - 1:
                check_deadline()
            scope["value"] = value
            scope["this"] = item
            value = in_fn(scope)
            t = type(value)
            if t is list or t is dict:  # strings are checked where they are built
                n = len(prev)
                if t is list and type(prev) is list and 0 < n <= len(value) and all(map(is_, prev, value)):
                    # the previous value extended ($concatArrays, the usual reduction): measure the new part
                    size = prev_size + value_size(value[n:], MAX_VALUE_BYTES - prev_size, memo) - 5
                else:
                    size = value_size(value, MAX_VALUE_BYTES, memo)
                if size > MAX_VALUE_BYTES:
                    raise too_large("$reduce", size)
                prev, prev_size = value, size
        return value
    return evaluate


# --- ordering: $sortArray $firstN $lastN $maxN $minN ----------------------------------------

@implements(EXPRESSION, "$sortArray")
def _sort_array(args):
    if type(args) is not dict or set(args) != {"input", "sortBy"}:
        raise ExecutionError("$sortArray expects an object with exactly the fields 'input' and 'sortBy'")
    input_fn = compile_expression(args["input"])  # sortBy is a sort specification, not an expression
    sort_by = args["sortBy"]
    if sort_by in (1, -1) and not isinstance(sort_by, bool):
        reverse = sort_by == -1

        def order(array):
            return sorted_paced(array, sort_key, reverse)
    else:
        # The same order as the $sort stage.
        keys = parse_sort_spec(sort_by, "$sortArray")

        def order(array):
            return sort_documents(list(array), keys, check=check_deadline)

    def evaluate(vars):
        array = input_fn(vars)
        if is_nullish(array):
            return None
        if type(array) is not list:
            raise ExecutionError(f"The input argument to $sortArray must be an array, but was of type: "
                                 f"{bson_type(array)}")
        check_deadline_for(array)
        return order(array)
    return evaluate


def _n_array(op: str, select):
    def compile_(args):
        named = compile_named(args, name=op, required=("n", "input"))
        n_fn, input_fn = named["n"], named["input"]

        def evaluate(vars):
            array = input_fn(vars)
            n = positive_n(op, n_fn(vars))
            if is_nullish(array):
                return None
            if type(array) is not list:
                raise ExecutionError(f"{op}: input must be an array, found {bson_type(array)}")
            check_deadline_for(array)
            return select(array, n)
        return evaluate
    return compile_


def _min_n(array, n):
    return sorted_paced([v for v in paced(array) if v is not None], sort_key)[:n]


def _max_n(array, n):
    return sorted_paced([v for v in paced(array) if v is not None], sort_key, reverse=True)[:n]


implements(EXPRESSION, "$firstN")(_n_array("$firstN", lambda array, n: array[:n]))
implements(EXPRESSION, "$lastN")(_n_array("$lastN", lambda array, n: array[-n:]))
implements(EXPRESSION, "$minN")(_n_array("$minN", _min_n))
implements(EXPRESSION, "$maxN")(_n_array("$maxN", _max_n))

__all__ = ["RANGE_MAX_ELEMENTS"]
