"""The engine's services, composed by :class:`hippocampus.service.Hippocampus`.

Each service is a class with its own state, built with what it uses: the
parts every service shares (:class:`~hippocampus.services.context.Context`:
the store, the embedder, the extractor, the shared settings), the components
several use (:class:`~hippocampus.services.checks.Checks`,
:class:`~hippocampus.services.features.TextFeatures`,
:class:`~hippocampus.services.learning.LearningQueue`,
:class:`~hippocampus.services.quality.QualityGate`,
:class:`~hippocampus.services.judging.Judge`), and the other services it calls,
each passed to its constructor:

- :mod:`~hippocampus.services.remembering`: new memories, one at a time or many
  (:mod:`~hippocampus.services.batch` holds a batch's decisions,
  :mod:`~hippocampus.services.ingest` and :mod:`~hippocampus.services.stages`
  the stream that reads ahead);
- :mod:`~hippocampus.services.memories`: reading, editing, forgetting;
- :mod:`~hippocampus.services.resources`: an application's records;
- :mod:`~hippocampus.services.recall` and :mod:`~hippocampus.services.exploration`:
  recall, association and the graph around a node;
- :mod:`~hippocampus.services.conversations` and
  :mod:`~hippocampus.services.engagement`: surfacing, and what use and feedback
  teach;
- :mod:`~hippocampus.services.maintenance`, :mod:`~hippocampus.services.stats`
  and :mod:`~hippocampus.services.transfer`: decay, tiers and reindexing;
  counts and graph health; export and import.

Callers use ``Hippocampus``, whose methods are these services' and whose
attributes name them (``engine.retrieval``, ``engine.remembering``...).
"""
