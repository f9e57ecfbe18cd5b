"""The Neo4j graph: the seed schema (Conversation, Message, Document, DecisionTrace, TraceStep).

    (:Conversation)-[:HAS_MESSAGE]->(:Message)-[:NEXT]->(:Message)      NEXT: visible turns of the active branch
    (:Message)-[:REPLIES_TO]->(:Message)                                every message to its parent (all branches)
    (:Conversation)-[:HAS_DOCUMENT]->(:Document)                        the RAG text (chatetl.rag.documents)
    (:Conversation)-[:HAS_TRACE]->(:DecisionTrace)-[:HAS_STEP]->(:TraceStep)-[:NEXT]->(:TraceStep)   deep mode
    (:TraceStep)-[:RESULT_OF]->(:TraceStep)   a tool result to its own call
    (:TraceStep)-[:FROM_MESSAGE]->(:Message)  the message holding the call or result

Modules: `properties` (node properties from the model, the seed's names and values),
`traces` (deep mode's DecisionTrace/TraceStep rows), `schema` (constraints and indexes),
`load` (batched writes, newest state wins, resyncs), `connection` (driver and sessions from
the environment, deep mode setting).
"""
