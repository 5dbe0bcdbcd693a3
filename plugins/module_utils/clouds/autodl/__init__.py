"""AutoDL. plan: what cloud_autodl decides for one host from its container facts."""
