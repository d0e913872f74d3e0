"""``python -m services.model_sim --port P --script F``: the simulator as a process."""

from services.cli.model_sim_cmd import model_sim

if __name__ == "__main__":
    model_sim(prog_name="python -m services.model_sim")
