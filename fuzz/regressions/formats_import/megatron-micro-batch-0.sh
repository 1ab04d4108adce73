torchrun --nproc_per_nod48 \
    --attention-backend auto \
    --micro-batch-size 0 \
    --global-batch-size 1536 \
    --rampup-batch-size 16 16 5859375 \
    --train-iters 500000 \
    --weight-decay 0.1 \
    --adam-beta1 0.9 \
    --adam-beta2 0.95 \
    --init-method-std-tensorboard-dir $TENSORBOARD_LOGS_PATH
