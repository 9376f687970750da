from ms_fmk_transplt.commands.launch import entry

if __name__ == "__main__":
    entry()
