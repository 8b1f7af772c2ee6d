# The production image: the project and its runtime dependencies only. The development extras (`.[dev]`:
# test and lint tools) and the embedded PostgreSQL/Redis (`.[embedded]`, for `./dev` on a laptop) are not
# installed; DATABASE_URL and REDIS_URL point at real servers (docker-compose.yml).
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 DJANGO_SETTINGS_MODULE=planner.settings
WORKDIR /app
COPY pyproject.toml README.md ./
COPY planner planner
COPY solvers solvers
COPY scenarios scenarios
COPY integrations integrations
COPY api api
COPY web web
COPY manage.py ./
RUN pip install . && useradd --system --no-create-home planner \
    && STATIC_ROOT=/app/static DATABASE_URL=postgres://x@127.0.0.1:1/x REDIS_URL=redis://127.0.0.1:1/0 \
       python manage.py collectstatic --noinput
# Production settings unless told otherwise (a host that runs the image with its URLs alone gets no DEBUG and
# must give SECRET_KEY); collectstatic above runs before this line, so the build needs no secret.
ENV STATIC_ROOT=/app/static PLANNER_ENV=production
USER planner
EXPOSE 8000
CMD ["gunicorn", "planner.wsgi", "--bind", "0.0.0.0:8000", "--workers", "3", "--threads", "4", "--access-logfile", "-"]
