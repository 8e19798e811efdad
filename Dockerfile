# One image for the web server and the worker; docker-compose.yml picks the
# command. PyTorch's CUDA wheels bring their own CUDA runtime, so a plain
# Python base image is enough: the host needs only the NVIDIA driver and the
# NVIDIA Container Toolkit.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    DATA_DIR=/data

# A C compiler for torch.compile (Triton builds its launchers with one).
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt
COPY . .
RUN python manage.py collectstatic --noinput

# Web server, worker and jobs run as an unprivileged user, never as root;
# the data volume is created owned by it.
RUN useradd --create-home --uid 1000 app && mkdir -p /data && chown app:app /data && chmod 700 /data
USER app

EXPOSE 8000
CMD ["uvicorn", "digitslike.asgi:application", "--host", "0.0.0.0", "--port", "8000", "--lifespan", "off", "--timeout-graceful-shutdown", "2"]
