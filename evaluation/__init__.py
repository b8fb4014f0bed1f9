"""Benchmark evaluation of the whole system and its baselines (``evomem eval locomo|memsyco|beam``).

    metrics.py    C.5 retrieval metrics, LoCoMo F1, Acc@complete, bootstrap CIs (pure functions)
    baselines.py  turn-level NaiveRAG / BM25 / RRF / budget-matched NaiveRAG / full context
    harness.py    session-by-session ingestion in time order, questions without future leakage,
                  our system + ablations + baselines scored on the same question in one pass
    locomo.py, beam.py, memsyco.py   each benchmark's episodes and answer scoring
    memsyco_selection.py   the judge-free MemSyco valid-memory-selection check of the store
    answers.py    optional answer metrics: AnswerPipeline and baseline answers (graded by scoring/judge.py)
    report.py     JSON report, markdown table, PNG charts
"""
