"""Project memory review: members' proposed project memory writes, decided by an owner."""
