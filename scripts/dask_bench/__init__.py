"""The parts of scripts/bench_dask.py: what they share (:mod:`.common`), the targets
(:mod:`.targets`), the scale plan's measurements (:mod:`.scale`) and its model
(:mod:`.model`)."""
