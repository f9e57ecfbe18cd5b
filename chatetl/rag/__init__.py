"""The RAG stage: conversations into Documents (`documents`), Documents into chunks
(`chunking`), optional embeddings from a local model (`embeddings`), and the stage of a
partition that writes them to the bucket and, through chatetl.graph, to Neo4j (`partition`).
"""
