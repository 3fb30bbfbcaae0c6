"""The results store (`database`): runs, cells and rounds in SQLite or PostgreSQL, with the schema
(`schema`) and the process that owns a run (`owner`)."""
