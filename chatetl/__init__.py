"""chatetl: turn AI-chat exports into normalized tables, a Neo4j graph, RAG text and files."""

__version__ = "0.1.0"
