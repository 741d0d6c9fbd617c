package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

func (a *app) configCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "config [SUITE]",
		Short: "Print the resolved configuration (defaults < suite file < -f < env < --set/flags) and exit",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			suite := ""
			if len(args) == 1 {
				suite = args[0]
			}
			cfg, err := a.g.load(suite)
			if err != nil {
				return err
			}
			raw, err := yaml.Marshal(cfg.Settings())
			if err != nil {
				return err
			}
			fmt.Fprint(a.stdout, string(raw))
			return nil
		},
	}
}
