from ms_fmk_transplt.cli import entry

if __name__ == "__main__":
    entry()
