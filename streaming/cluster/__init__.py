"""The door to the cluster: every Kafka request (admin.py) with its retries (retry.py), the poll built
from them (poller.py), why a connection failed (connect_diagnosis.py) and the ACLs each command needs
(acls.py). Imports only streaming.vocabulary of this project."""
