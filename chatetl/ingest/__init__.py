"""The normalize stage of one day: uploads in raw/ into the normalized tables, each upload once.

The data's path: the sensor's bounded scan of raw/ (`scan`) records what changed in the
upload index (`index`); a partition's run finds its day's uploads there, skips those the
`ledger` says are done (same ETag, same parser, outputs in place), reads each other one into
its tables and quarantine (`upload`), and retracts what moved to another day or was deleted
(`partition`). `checks` holds the tables to their contract afterwards.
"""
