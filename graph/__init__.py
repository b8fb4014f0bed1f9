"""Ground floor: the ontology data model, edit rules, the GraphStore contract with its backends, retrieval and rendering."""
