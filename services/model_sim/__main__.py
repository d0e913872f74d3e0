"""``python -m services.model_sim --port P --script F``: the simulator as a process."""

from services.model_sim.command import model_sim

if __name__ == "__main__":
    model_sim(prog_name="python -m services.model_sim")
