"""Dagster resources: the object store and Neo4j, swapped per environment behind one interface each."""

from resources.neo4j import Neo4jResource
from resources.object_store import LocalObjectStoreResource, ObjectStoreResource, S3ObjectStoreResource

__all__ = ["LocalObjectStoreResource", "Neo4jResource", "ObjectStoreResource", "S3ObjectStoreResource"]
