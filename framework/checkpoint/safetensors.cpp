// placeholder: replaced by the checkpoint work
