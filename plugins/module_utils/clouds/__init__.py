"""Each cloud's pieces: aws/ (the cluster plan, IMDS, EFA on a host), alibaba/ (the ECS plan),
autodl/ (what an AutoDL container needs).
"""
