#!/bin/bash

# Parameters
#SBATCH --dependency=singleton
#SBATCH --error=/lustre/fsw/llm/results/gpt3_5b/log-nemo-megatron-gpt3_5b_%j.err
#SBATCH --exclusive
#SBATCH --gpus-per-node=8
#SBATCH --job-name=nemo-megatron-gpt3_5b
#SBATCH --mem=0
#SBATCH --nodes=4
#SBATCH --ntasks-per-node=8
#SBATCH --output=/lustre/fsw/llm/results/gpt3_5b/log-nemo-megatron-gpt3_5b_%j.out
#SBATCH --time=6-00:00:00

# setup
export TRANSFORMERS_OFFLINE=1
export TORCH_NCCL_AVOID_RECORD_STREAMS=1
export NCCL_NVLS_ENABLE=0

# command 1
srun --output /lustre/fsw/llm/results/gpt3_5b/log-nemo-megatron-gpt3_5b_%j.out --error /lustre/fsw/llm/results/gpt3_5b/log-nemo-megatron-gpt3_5b_%j.err --container-image nvcr.io#nvidia/nemo:24.05 --container-mounts /lustre/fsw/llm:/lustre/fsw/llm,/lustre/fsw/llm/results/gpt3_5b:/lustre/fsw/llm/results/gpt3_5b --no-container-mount-home bash -c "
  wandb login ${WANDB_API_KEY};
  cd /opt/NeMo;
  git rev-parse HEAD;
  export PYTHONPATH=/opt/NeMo:\${PYTHONPATH};
  CUDA_DEVICE_MAX_CONNECTIONS=1 python3 -u /opt/NeMo/examples/nlp/language_modeling/megatron_gpt_pretraining.py  \
  --config-path=/lustre/fsw/llm/results/gpt3_5b \
  --config-name=gpt3_5b_hydra.yaml "
