# One image for web, workers and beat. Two interpreters, as in development: the site on 3.12, the
# grader on Debian's 3.11 with torch (see README.md, "Two interpreters").
FROM python:3.12-slim-bookworm
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3.11 python3.11-venv make libseccomp2 \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml Makefile README.md ./
COPY requirements requirements
COPY quizbank quizbank
COPY accounts accounts
COPY practice practice
RUN make setup PYTHON=/usr/local/bin/python3.12 GRADER_PYTHON_BASE=/usr/bin/python3.11
COPY . .
RUN DEBUG=1 .venv/bin/python manage.py collectstatic --noinput \
 && useradd --system --uid 10001 --no-create-home quizbank
EXPOSE 8000
