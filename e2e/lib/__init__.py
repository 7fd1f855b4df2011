"""Real-component end-to-end harness for tessera (etcd + kube-apiserver + kube-scheduler)."""
