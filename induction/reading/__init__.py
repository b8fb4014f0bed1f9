"""Reading a statement's English, one idea per module: who says it (``holder``), whether it asks or responds
rather than holds a state (``questions``, ``responses``, ``state``), whether it turns against an earlier state
(``change``), instructs (``instructions``), corrects (``corrections``) or negates (``negation``).

``graph.rules`` says what the ontology allows (kinds, holders, direction in time, acyclicity); these modules
read the words. Every pattern is written as named classes (``cues.CueSet``), each with a comment saying what it
covers, and each class has a test sentence from outside every benchmark (tests/test_reading.py).
"""
