"""Ground floor: the ontology data model, its edit rules, time travel over it, and the GraphStore contract with its backends."""
