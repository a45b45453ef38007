"""The pure core: policy + generation boundary + candidates in, provider messages and decisions out.

Nothing here reads a clock, the environment, the network or entropy (``tests/unit/test_architecture.py``);
the same inputs give byte-identical output. One model call is two passes with the caller's I/O between
them (:mod:`policy.assembler`): ``select_context`` decides, the caller reads the planned raw bytes,
``render_context`` renders and records.

The stages of the selection pass, as the docs number them (docs/policy.md), each in its module:

====  ===============================================  ===============================
 1    route: which privacy classes reach the provider  :mod:`policy.admission`
 2    lineage and visibility                           :mod:`policy.admission`, :mod:`policy.gates`
 3    supersession and contradiction                   :mod:`policy.admission`
 4    freshness                                        :mod:`policy.admission`, :mod:`policy.gates`
 5    recovery protection                              :mod:`policy.admission`
 6    transcript                                       :mod:`policy.transcript`
 7    budget                                           :mod:`policy.budget`
 8    rehydration of requested evidence                :mod:`policy.rehydration`
 9    appended events and first reads, native          :mod:`policy.native`
====  ===============================================  ===============================

Around them: :mod:`policy.epochs` decides whether a call continues its participant's cached prefix;
:mod:`policy.selection` holds what the stages share (the pass's :class:`~policy.selection.SelectionContext`,
items, the decision ledger) and :mod:`policy.plans` the appended part's plan; :mod:`policy.render` and
:mod:`policy.lines` own the rendered format (:mod:`policy.views` the bounded view of a large result's
first read), :mod:`policy.validate` the provider rules.
Off the assembly path: :mod:`policy.derive` (a result's compact memory, reading it through
:mod:`policy.payloads`), :mod:`policy.links` (supersession between memories), :mod:`policy.taint` (how strict
a model's output is), :mod:`policy.retention`, :mod:`policy.recall`, :mod:`policy.explain` (why-not, trace,
diff), :mod:`policy.legacy` (the replay baseline) and :mod:`policy.versions` (every policy by its tag).
"""
