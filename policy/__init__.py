"""The Reasoning-State policy: its format, the rule baseline, the learned policy, rewards and GRPO training."""
