"""`xmdata explain`: one row's path through every stage, read from the tables the stages wrote."""
