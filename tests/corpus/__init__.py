"""A corpus no one on the team invented (issue 31, item 6).

fablab's own render of a built-in, re-expressed switch by switch in the styles of other people's
automation: SONiC's bgpcfgd templates and sample config_db.json files, FRR's documentation, NVIDIA
Cumulus/NVUE's rendered frr.conf, FRR's own `show running-config`. Each rewriter keeps the meaning and
changes the words; the sources each style follows are named in its docstring (tests/corpus/styles.py).
Nothing fetched from those projects is copied here: the rewriters are our own code.

    .venv/bin/python -m tests.corpus.styles STYLE SRC_RENDER_DIR DST_DIR

- `model`: fablab's frr.conf read into a small structure (groups, neighbours, address families,
  prefix lists, route maps, BFD profiles) that the style writers write out again.
- `styles`: the writers (frr.conf and config_db.json) and the command line.
- `faults`: semantic faults applied to the structure or to config_db.json before a style writes it,
  so that every style expresses the same fault in its own words.
- `rewrites`: small meaning-preserving rewordings and semantic mutations for the property test.
"""
