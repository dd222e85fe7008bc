"""One scenario per step: create Nodes and Pods with the official client, report the bindings."""
