"""Results of a run as files: one directory per run (results), the HTML report (html), and where
the run came from (provenance)."""
