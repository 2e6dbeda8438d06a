# PostgreSQL with pgvector and Apache AGE from the PGDG packages of the official image.
# pg_textsearch has no Debian package: without it the keyword lane ranks with tsvector.
FROM postgres:17
RUN apt-get update \
    && apt-get install -y --no-install-recommends postgresql-17-pgvector postgresql-17-age \
    && rm -rf /var/lib/apt/lists/*
CMD ["postgres", "-c", "shared_preload_libraries=age"]
