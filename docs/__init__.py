"""tokenlaw's documentation, shipped in the wheel as package data: ``tokenlaw docs [TOPIC]`` prints it."""
