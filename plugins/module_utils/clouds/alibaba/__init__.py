"""Alibaba Cloud. ecs_plan: what cloud_alibaba decides from the ECS API's answers."""
