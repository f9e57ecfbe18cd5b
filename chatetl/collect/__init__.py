"""`chatetl collect` and `chatetl doctor`: coding agents' session logs copied to the bucket before the agents purge them.

`agents` finds each agent's sessions on this machine (`opencode_bundles` builds opencode's), `run`
copies what is new or grown to `raw/agents/<agent>/<project>/<session>.<ext>`, `doctor` tells what is
collected and what is at risk. The pipeline reads the copies like any upload.
"""
