"""Device checks: a job kind that multiplies matrices on a worker's device
for a while and reports the rate it measured, a quick way to see that a
worker, its GPUs and the whole job path work. The work itself is
``trainer/devicecheck.py``; this app registers the kind and gives it its
form and its section of the job page."""
