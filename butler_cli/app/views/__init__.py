"""What single commands read or change (doctor, tools, keys, memories, models, policies)."""
