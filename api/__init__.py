"""The REST API over the engine: routers, schemas, auth and error mapping."""
