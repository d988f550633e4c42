"""What the tests build: CLI runs in process, demo and recipe releases, servers, hostile inputs."""
