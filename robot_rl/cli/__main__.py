"""``python -m robot_rl.cli`` runs the ``robot-rl`` command."""

from robot_rl.cli import main

main()
