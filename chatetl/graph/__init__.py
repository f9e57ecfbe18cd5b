"""The Neo4j graph: the seed schema (Conversation, Message, Document, DecisionTrace, TraceStep)."""
