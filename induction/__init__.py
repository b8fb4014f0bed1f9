"""Writing memories: sessions in, facts, concepts and relations out (extract, resolve, adjudicate, validate, commit), plus forgetting."""
