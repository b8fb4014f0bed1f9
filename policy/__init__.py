"""Reasoning-State policy: format, rule baseline, learned policy, rewards, GRPO training."""
