"""The Neo4j graph: every Cypher statement chatetl runs lives in this package.

    (:Conversation)-[:HAS_MESSAGE]->(:Message)-[:NEXT]->(:Message)      NEXT: visible turns of the active branch
    (:Message)-[:REPLIES_TO]->(:Message)                                every message to its parent (all branches)
    (:Conversation)-[:HAS_DOCUMENT]->(:Document)                        the RAG text (chatetl.rag.documents)
    (:Document)-[:HAS_CHUNK]->(:Chunk)-[:NEXT]->(:Chunk)                its chunks in order (chatetl.rag.chunking)
    (:Conversation)-[:HAS_TRACE]->(:DecisionTrace)-[:HAS_STEP]->(:TraceStep)-[:NEXT]->(:TraceStep)   deep mode
    (:TraceStep)-[:RESULT_OF]->(:TraceStep)   a tool result to its own call
    (:TraceStep)-[:FROM_MESSAGE]->(:Message)  the message holding the call or result

Modules: `properties` (node properties from the model), `traces` (deep mode's
DecisionTrace/TraceStep rows), `schema` (constraints and indexes), `load` (Conversations and
Messages: batched writes, newest state wins, resyncs), `documents` (Document nodes, following
their Conversation's winning state), `chunks` (Chunk nodes, full-text and vector search),
`checks` (the graph against a partition's tables), `connection` (driver and sessions from the
environment, deep mode setting).
"""
