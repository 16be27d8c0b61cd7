"""The declared interfaces between the engines and their kernels, below both.

The engines (``cercore.runtime``, ``cercore.trends``) and the compiled kernels
(``cercore_fast``) meet here, and only here: the kernels import nothing above this layer.

- ``constants``: the numbers both backends share (node kinds, sentinels, CONSUME codes);
- ``state``: the backend-neutral evaluator state (what both evaluators pickle);
- ``evaluator``: what an engine hands an evaluator per batch, and what it may call;
- ``letters``: the letters kernel (an event's letter from its predicates' truth values);
- ``trends``: what the trend engine hands a trend runner, and what it may call.
"""
