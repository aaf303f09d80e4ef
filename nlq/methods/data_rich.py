"""`data-rich`: as `sampled` with 8 raw documents per collection (the paper's
Data-rich Direct: sample size separated from mechanism), one call.
"""

from __future__ import annotations

from nlq.methods.sampled import SampledMethod


class DataRichMethod(SampledMethod):
    name = "data-rich"
    prompt_name = "data-rich"
    documents = 8


METHOD = DataRichMethod()
