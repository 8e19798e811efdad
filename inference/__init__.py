"""Using a trained model on many images: the evaluation job kind (a model's
validation or test split, a text list, a server folder or an uploaded
archive), its report page and API, and Compare on a group page. The work
itself is ``trainer/inference/job.py``; this app validates, queues and shows."""
