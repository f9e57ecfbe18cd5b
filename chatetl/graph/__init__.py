"""The Neo4j graph: every Cypher statement chatetl runs lives in this package.

    (:Conversation)-[:HAS_MESSAGE]->(:Message)-[:NEXT]->(:Message)      NEXT: visible turns of the active branch
    (:Message)-[:REPLIES_TO]->(:Message)                                every message to its parent (all branches)
    (:Conversation)-[:HAS_DOCUMENT]->(:Document)                        the RAG text (chatetl.rag.documents)
    (:Document)-[:HAS_CHUNK]->(:Chunk)-[:NEXT]->(:Chunk)                its chunks in order (chatetl.rag.chunking)
    (:Conversation)-[:HAS_TRACE]->(:DecisionTrace)-[:HAS_STEP]->(:TraceStep)-[:NEXT]->(:TraceStep)   deep mode
    (:TraceStep)-[:RESULT_OF]->(:TraceStep)   a tool result to its own call
    (:TraceStep)-[:FROM_MESSAGE]->(:Message)  the message holding the call or result

Modules: `connection` (driver and sessions, one-transaction helpers), `schema` (constraints and
indexes), `properties` and `traces` (node properties from the model, deep mode's traces);
the load: `decide` (which state of a conversation the graph keeps), `statements` (its Cypher),
`upsert` (one batch in one transaction), `staging` (a conversation too big for one, in steps),
`writer` (one conversation failing alone), `summary` (what a load did), `load` (the batched load,
a day's partition); `retract` (conversations out of the graph), `documents` (Document nodes,
following their Conversation's state), `chunks` (Chunk nodes and their indexes), `chunk_search`
(searching them), `checks` (the graph against a partition's tables), `totals` (what it holds now).
"""
