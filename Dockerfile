# One image for the web server and the worker; docker-compose.yml picks the
# command. PyTorch's CUDA wheels bring their own CUDA runtime, so a plain
# Python base image is enough: the host needs only the NVIDIA driver and the
# NVIDIA Container Toolkit.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    DATA_DIR=/data

WORKDIR /app
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt
COPY . .
RUN python manage.py collectstatic --noinput

EXPOSE 8000
CMD ["uvicorn", "digitslike.asgi:application", "--host", "0.0.0.0", "--port", "8000", "--timeout-graceful-shutdown", "2"]
